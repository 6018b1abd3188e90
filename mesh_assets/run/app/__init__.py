"""The file a Spark submission runs, alone in its folder: Python puts the folder first on ``sys.path``, and
nothing here can shadow an installed module."""

from pathlib import Path

APPLICATION = Path(__file__).with_name("mesh_remote.py")
"""spark-submit's application and EMR's entry point (:mod:`mesh_assets.run.remote`)."""
