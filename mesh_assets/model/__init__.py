"""The floor: what a domain team declares (products, tables, inputs, windows, checks, contacts, names) and the
``Grain`` that owns every partition key, window and parse. It imports nothing of Mesh's runtime."""
