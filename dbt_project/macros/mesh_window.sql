{#- The run's partition window. Mesh sets MESH_DBT_MIN_DATE / MESH_DBT_MAX_DATE: a changed --vars makes dbt
    parse the whole project again, a changed environment variable does not. By hand, `dbt compile --vars
    '{"min_date": ..., "max_date": ...}'` sets the window (defaults in dbt_project.yml).
    Values are parsed as dates before they reach SQL, so nothing but a date literal is ever rendered. -#}
{% macro mesh_window_bounds() -%}
  {%- set lo = modules.datetime.date.fromisoformat(env_var('MESH_DBT_MIN_DATE', var('min_date')) | string) -%}
  {%- set hi = modules.datetime.date.fromisoformat(env_var('MESH_DBT_MAX_DATE', var('max_date')) | string) -%}
  {%- if lo > hi -%}
    {{ exceptions.raise_compiler_error("min_date " ~ lo ~ " is after max_date " ~ hi) }}
  {%- endif -%}
  {{ return([lo, hi]) }}
{%- endmacro %}

{% macro mesh_window(column='p_date') -%}
  {%- set bounds = mesh_window_bounds() -%}
  {{ column }} BETWEEN DATE'{{ bounds[0] }}' AND DATE'{{ bounds[1] }}'
{%- endmacro %}

{#- The same window widened by `days - 1` days before min_date (rolling windows). -#}
{% macro mesh_window_last(days, column='p_date') -%}
  {%- set bounds = mesh_window_bounds() -%}
  {%- set lo = bounds[0] - modules.datetime.timedelta(days=days - 1) -%}
  {{ column }} BETWEEN DATE'{{ lo }}' AND DATE'{{ bounds[1] }}'
{%- endmacro %}
