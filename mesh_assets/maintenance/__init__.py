"""Maintenance of Mesh's own Delta tables: compaction, clean-up with retention, restore, retired tables.

None of it is new data: compaction and clean-up commit with ``dataChange: false`` and record no
materialization, so nothing downstream goes stale or runs; a restore is a publication and records one.
"""
