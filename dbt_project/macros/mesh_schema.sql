{#- A model's schema is its domain, exactly (dbt's default would prefix the target schema). -#}
{% macro generate_schema_name(custom_schema_name, node) -%}
  {{ (custom_schema_name or target.schema) | trim }}
{%- endmacro %}
