"""The one exception type for a mistake the user made and can fix.

`UserError` is what library code raises when the input it was given is wrong: a flag or
setting out of range, a model spec or path that names nothing usable, a data file that is
malformed, export settings that cannot go together. `common.cli.run` ends a script on it with
one line on stderr and exit code 2. Any other exception, a plain `ValueError` included, is a
defect of the toolkit: the script shows its traceback and exits with 1.

`UserError` subclasses `ValueError`, so code that catches `ValueError` around the library
keeps working. This module imports nothing heavy: the CLI and every package can use it
without loading TensorFlow.
"""


class UserError(ValueError):
    """Input the user gave is wrong: the message names what was expected, what was got and
    what to do next."""


__all__ = ["UserError"]
