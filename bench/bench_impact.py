"""Throughput of the bonded block impact; see :mod:`granular.benchmark` (also ``granular bench``)."""

import sys

from granular.benchmark import main

if __name__ == "__main__":
    sys.exit(main())
