"""python -m m0: the same command line as ``m0``."""
import sys

from m0._cli import main

sys.exit(main())
