"""OpenLineage for product runs: events from what Spark actually read and wrote, and the graph they form.

Each module is imported where it is used: a run launched on a cluster captures its reads without loading the
OpenLineage client, which only the step that emits the events needs.
"""
