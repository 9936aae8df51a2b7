"""Run in a fresh process: tests/replica_check.py's check for several models in one TensorFlow
start-up (cheaper than a process each).

    python tests/replica_check_many.py <settings as JSON> <method>[:<phase>] ...

Prints one JSON line per model, as tests/replica_check.py does.
"""

import json
import sys

import replica_check  # first: it splits the CPU into 2 logical devices before TensorFlow starts

if __name__ == "__main__":
    settings = json.loads(sys.argv[1])
    mirrored = replica_check.mirrored_strategy()
    for model in sys.argv[2:]:
        name, _, phase = model.partition(":")
        replica_check.main(name, settings, phase or None, mirrored)
