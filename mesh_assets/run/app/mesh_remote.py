"""The Python file a Spark submission runs (spark-submit's application, EMR's entry point): Mesh's remote side
of a run launched in engine mode ``submit`` (see :mod:`mesh_assets.run.remote`)."""

import sys

from mesh_assets.run.remote import main

if __name__ == "__main__":
    sys.exit(main())
