from mesh_assets import domain_definitions

defs = domain_definitions(__file__)
