{#- Mesh's write semantics for dbt: `incremental_strategy='replace_where'` replaces exactly the window's
    partitions in one Delta commit (INSERT INTO ... REPLACE WHERE), so a re-run of a day is idempotent, a
    day that now yields no rows is emptied, and Delta rejects any row outside the window. On the session
    target Mesh itself publishes, after the model's tests passed (mesh_assets/dbt/gate.py), and reads the
    strategy as this contract; dbt runs these macros on the thrift target. They override dbt-spark's
    (non-dispatched) macros of the same name; the root project's macros win. -#}

{% macro dbt_spark_validate_get_incremental_strategy(raw_strategy, file_format) %}
  {% set accepted = ['append', 'merge', 'insert_overwrite', 'microbatch', 'replace_where'] %}
  {% if raw_strategy not in accepted %}
    {% do exceptions.raise_compiler_error("Invalid incremental strategy provided: " ~ raw_strategy
        ~ "\n    Expected one of: " ~ accepted | join(', ')) %}
  {% endif %}
  {% if raw_strategy in ['merge', 'replace_where'] and file_format not in ['delta', 'iceberg', 'hudi'] %}
    {% do exceptions.raise_compiler_error("Invalid incremental strategy provided: " ~ raw_strategy
        ~ "\n    You can only choose this strategy when file_format is set to 'delta' or 'iceberg' or 'hudi'") %}
  {% endif %}
  {% if raw_strategy in ['insert_overwrite', 'microbatch'] and target.endpoint %}
    {% do exceptions.raise_compiler_error("Invalid incremental strategy provided: " ~ raw_strategy
        ~ "\n    You cannot use this strategy when connecting via endpoint") %}
  {% endif %}
  {% do return(raw_strategy) %}
{% endmacro %}


{% macro get_replace_where_sql(source_relation, target_relation) %}
  {%- set partition_by = config.get('partition_by') -%}
  {%- if partition_by is string -%}{%- set partition_by = [partition_by] -%}{%- endif -%}
  {%- if not partition_by or partition_by | length != 1 -%}
    {{ exceptions.raise_compiler_error("replace_where needs exactly one partition_by column (the day)") }}
  {%- endif -%}
  {%- set dest_columns = adapter.get_columns_in_relation(target_relation) -%}
  {%- set dest_cols_csv = dest_columns | map(attribute='quoted') | join(', ') -%}
  insert into {{ target_relation }}
  replace where {{ mesh_window(adapter.quote(partition_by[0])) }}
  select {{ dest_cols_csv }} from {{ source_relation }}
{% endmacro %}


{% macro dbt_spark_get_incremental_sql(strategy, source, target, existing, unique_key, incremental_predicates) %}
  {%- if strategy == 'replace_where' -%}
    {{ get_replace_where_sql(source, target) }}
  {%- elif strategy == 'append' -%}
    {{ get_insert_into_sql(source, target) }}
  {%- elif strategy in ['insert_overwrite', 'microbatch'] -%}
    {%- if strategy == 'microbatch' and not config.get('partition_by') -%}
      {{ exceptions.raise_compiler_error("dbt-spark 'microbatch' incremental strategy requires a `partition_by` config.") }}
    {%- endif -%}
    {{ get_insert_overwrite_sql(source, target, existing) }}
  {%- elif strategy == 'merge' -%}
    {{ get_merge_sql(target, source, unique_key, dest_columns=none, incremental_predicates=incremental_predicates) }}
  {%- else -%}
    {{ exceptions.raise_compiler_error("No known SQL for the incremental strategy provided: " ~ strategy) }}
  {%- endif -%}
{% endmacro %}
