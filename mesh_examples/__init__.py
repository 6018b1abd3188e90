"""The example mesh's outside world: seeded source data, the writers that land it, and the demo run.

It stands apart from ``mesh_assets`` because a real mesh has none of it: its sources are landed by apps and
ingestion jobs Mesh does not own. The platform never imports this package; ``mesh demo`` and ``mesh ingest``
(the command line, the platform's face, when they run: ``commands.py``, ``run.py`` and ``progress.py``, the
demo's screen) and the tests and benchmarks do.
"""
