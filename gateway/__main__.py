import sys

from gateway.composition.cli import main

sys.exit(main())
