"""Discovery: every ``domains/<domain>/`` folder is scanned; one file per product, no registration.

Python files contribute the :class:`Product` objects they define; ``defs/<name>/defs.yaml`` components (and
plain YAML files) are declarative products. Every product inherits the domain's defaults (``domain.yaml``)
for the fields it does not set. Every problem is collected as a :class:`SpecError` naming the file, line and
field.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import ModuleType

from pydantic import ValidationError

from mesh_assets.graph import component_specs, yaml_lines
from mesh_assets.graph.defaults import DEFAULTS_FILE, load_defaults
from mesh_assets.graph.rules import product_errors
from mesh_assets.graph.spec_errors import field_error, pydantic_errors, read_spec
from mesh_assets.model.author import Product, loading
from mesh_assets.model.defaults import DomainDefaults
from mesh_assets.model.errors import SpecError, relative
from mesh_assets.model.names import IDENTIFIER
from mesh_assets.model.product import DataProduct

SKIPPED_PY = {"definitions.py", "__init__.py"}
TESTS_SUFFIX = ".tests.yaml"
"""A product's unit tests beside its spec (``orders.tests.yaml``): read by ``mesh test``, never a product spec."""
Loaded = tuple[list[DataProduct], list[SpecError]]


@dataclass
class DomainSpecs:
    domain: str
    folder: Path
    products: list[DataProduct] = field(default_factory=list)
    errors: list[SpecError] = field(default_factory=list)
    modules: list[ModuleType] = field(default_factory=list, compare=False, repr=False)
    """The domain's Python files as loaded in this process: the composition root takes the plain Dagster assets
    they define (assets written without Mesh, kept in the domain's code location beside its products)."""


def domain_folders(domains_dir: Path) -> list[Path]:
    return sorted(p for p in domains_dir.iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))


TRANSFORMATION_FIELDS = {"inputs", "sql", "sql_file", "range_aware", "line"}
"""A YAML table's fields that are its query's; the others are its output's, ``kind`` (the table's kind) among
them (``kind: sql``, the query's own tag, is dropped: a YAML table is always SQL)."""


def _with_lines(inputs: object, lines: yaml_lines.Lines, at: tuple) -> object:
    """YAML inputs, each with the line it is declared on (a list of inputs, or inputs by name)."""
    if isinstance(inputs, list):
        return [{**x, "line": lines.get((*at, j))} if isinstance(x, dict) else x for j, x in enumerate(inputs)]
    if isinstance(inputs, dict):
        return {k: {**x, "line": lines.get((*at, k))} if isinstance(x, dict) else x for k, x in inputs.items()}
    return inputs


def _load_yaml(
    path: Path, domain: str, defaults: DomainDefaults, component: bool = False, dagster_rules: bool = True
) -> tuple[list[DataProduct], list[SpecError]]:
    """A product spec file, or with ``component`` a ``defs.yaml`` whose ``attributes`` are one (a component of
    another type is Dagster's alone; an unreadable one fails the code location, so it is reported here too)."""
    data, lines, unreadable = read_spec(path)
    if unreadable:
        return [], unreadable
    if component:
        if not isinstance(data, dict) or data.get("type") != COMPONENT_TYPE:
            return [], []
        data, lines = component_specs.within(data, lines, ("attributes",))
    if not isinstance(data, dict):
        return [], [SpecError(relative(path), 1, "", "a product spec must be a YAML mapping")]
    if data.get("domain", domain) != domain:
        return [], [
            SpecError(
                relative(path),
                lines.get(("domain",)),
                "domain",
                f"spec says domain {data['domain']!r} but lives in domains/{domain}/",
            )
        ]
    errors: list[SpecError] = []
    transformations = []
    for i, raw in enumerate(data.get("tables") or []):
        if isinstance(raw, dict):
            if "inputs" in raw:
                raw = {**raw, "inputs": _with_lines(raw["inputs"], lines, ("tables", i, "inputs"))}
            raw = {
                "kind": "sql",
                **{k: v for k, v in raw.items() if k in TRANSFORMATION_FIELDS},
                "output": {
                    k: v for k, v in raw.items() if k not in TRANSFORMATION_FIELDS and (k, v) != ("kind", "sql")
                },
                "line": lines.get(("tables", i)),
                "sql_line": lines.get(("tables", i, "sql")) or lines.get(("tables", i, "sql_file")),
            }
            sql_file = raw.get("sql_file")
            if isinstance(sql_file, str):
                target = (path.parent / sql_file).resolve()
                if not target.is_relative_to(path.parent.resolve()) or not target.is_file():
                    errors.append(
                        SpecError(
                            relative(path),
                            lines.get(("tables", i, "sql_file")),
                            f"tables.{i}.sql_file",
                            f"SQL file {sql_file!r} not found next to the spec",
                        )
                    )
                    continue
        transformations.append(raw)
    external = [
        {**e, "line": lines.get(("external", i))} if isinstance(e, dict) else e
        for i, e in enumerate(data.get("external") or [])
    ]
    fields = defaults.under({k: v for k, v in data.items() if k not in {"tables", "external"}})
    fields.update(domain=domain, transformations=transformations, external=external, source_file=path, line=1)
    try:
        product = DataProduct.model_validate(fields)
    except ValidationError as exc:
        return [], errors + pydantic_errors(exc, path, lines, yaml_style=True)
    return ([product] if not errors else []), errors + product_errors(product, lines, dagster_rules)


COMPONENT_TYPE = "mesh_assets.DataProduct"
DEFS_FOLDER = "defs"
"""Where a domain keeps its Dagster component instances: ``defs/<name>/defs.yaml``."""


YamlCache = dict[str, list[DataProduct]]
"""A domain's validated YAML products by file (its path in the domain folder): read from, and filled by,
:func:`load_domain`, so an unchanged domain is loaded without reading its YAML again."""


def _through(cache: YamlCache | None, folder: Path, path: Path, load: Callable[[], Loaded]) -> Loaded:
    if cache is None:
        return load()
    name = path.relative_to(folder).as_posix()
    if name in cache:
        return cache[name], []
    products, errors = load()
    if not errors:
        cache[name] = products
    return products, errors


def _load_components(
    folder: Path, defaults: DomainDefaults, cache: YamlCache | None = None, dagster_rules: bool = True
) -> Loaded:
    """The products declared as ``mesh_assets.DataProduct`` components: their ``attributes`` are a product spec,
    validated (and reported with file, line and field) exactly as a product's YAML file is."""
    products: list[DataProduct] = []
    errors: list[SpecError] = []

    for path in sorted((folder / DEFS_FOLDER).glob("**/defs.yaml")):
        loaded = _through(
            cache,
            folder,
            path,
            lambda path=path: _load_yaml(path, folder.name, defaults, component=True, dagster_rules=dagster_rules),
        )
        products.extend(loaded[0])
        errors.extend(loaded[1])
    return products, errors


def product_lines(path: Path) -> tuple[dict[str, int], int | None]:
    """Where a Python file's products are made, read from its syntax tree once: the line of the statement
    binding each module-level name, and the line of the file's ``Product(...)`` call when it has exactly one
    (products made in a loop). Reading the source rather than the call stack keeps ``Product()`` free of
    stack inspection."""
    names: dict[str, int] = {}
    calls: list[int] = []
    pending: list[ast.AST] = [ast.parse(path.read_text(), str(path))]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and (target.id not in names or node.lineno < names[target.id]):
                    names[target.id] = node.lineno
        if isinstance(node, ast.Call):
            func = node.func
            if (func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)) == "Product":
                calls.append(node.lineno)
        pending.extend(ast.iter_child_nodes(node))
    return names, calls[0] if len(calls) == 1 else None


def _load_python(
    path: Path,
    domain: str,
    defaults: DomainDefaults,
    dagster_rules: bool = True,
    loaded: list[ModuleType] | None = None,
) -> tuple[list[DataProduct], list[SpecError]]:
    module_name = f"mesh_domains.{domain}.{path.stem}"
    try:
        spec = importlib.util.spec_from_file_location(module_name, path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        with loading(path):
            spec.loader.exec_module(module)
        if loaded is not None:
            loaded.append(module)
    except (Exception, SystemExit) as exc:  # a product file that calls sys.exit fails alone, too
        tb = exc.__traceback__
        line = None
        while tb is not None:
            if Path(tb.tb_frame.f_code.co_filename).resolve() == path.resolve():
                line = tb.tb_lineno
            tb = tb.tb_next
        if isinstance(exc, ValidationError):  # Output(...), Input(...) built in the file: one error a field
            return [], [field_error(path, line, err) for err in exc.errors()]
        why = f"calls sys.exit({exc.code!r})" if isinstance(exc, SystemExit) else f"{type(exc).__name__}: {exc}"
        return [], [SpecError(relative(path), line, "", why)]
    products, errors = [], []
    mine: dict[int, tuple[str, Product]] = {}  # a product under two names is one product, named first
    for key, value in vars(module).items():
        if isinstance(value, Product) and value.source_file == path:
            mine.setdefault(id(value), (key, value))
    if not mine:
        return products, errors
    named, only_call = product_lines(path)
    for name, value in mine.values():
        line = named.get(name, only_call)
        fields = {**defaults.under(value.spec_fields()), "source_file": path, "line": line}
        if fields.setdefault("domain", domain) != domain:
            errors.append(
                SpecError(
                    relative(path),
                    line,
                    "domain",
                    f"product says domain {fields['domain']!r} but lives in domains/{domain}/",
                )
            )
            continue
        try:
            product = DataProduct.model_validate(fields)
        except ValidationError as exc:
            lines = {(): line}
            lines.update({("transformations", i): t["line"] for i, t in enumerate(value.transformations)})
            errors.extend(pydantic_errors(exc, path, lines, yaml_style=False))
            continue
        products.append(product)
        at = {("tables", i): t["line"] for i, t in enumerate(value.transformations)}
        errors.extend(product_errors(product, {(): line, **at}, dagster_rules))
    return products, errors


def is_python_product(path: Path) -> bool:
    return path.suffix == ".py" and path.name not in SKIPPED_PY and not path.name.startswith("_")


def load_domain(
    folder: Path,
    on_file: Callable[[Path], object] = lambda path: None,
    cache: YamlCache | None = None,
    dagster_rules: bool = True,
) -> DomainSpecs:
    """Load every product in one domain folder, collecting all errors instead of stopping at the first;
    ``on_file`` hears of each file before it is loaded. A domain whose defaults file does not validate is
    reported alone: every product would inherit from it. YAML products found in ``cache`` are taken from it,
    and those read are added to it; Python files always run (their products are the code). Without
    ``dagster_rules`` owners and tags are not put to Dagster: for a submitted run's application, whose domain
    its code location accepted, and which runs without Dagster."""
    specs = DomainSpecs(domain=folder.name, folder=folder)
    if not IDENTIFIER.fullmatch(folder.name):
        specs.errors.append(SpecError(relative(folder), None, "domain", f"invalid domain name {folder.name!r}"))
        return specs
    defaults, specs.errors = load_defaults(folder)
    if specs.errors:
        return specs
    specs.products, specs.errors = _load_components(folder, defaults, cache, dagster_rules)
    for path in sorted(folder.iterdir()):
        if is_python_product(path):
            load = _load_python
        elif path.suffix in {".yaml", ".yml"} and path.name != DEFAULTS_FILE and not path.name.endswith(TESTS_SUFFIX):
            load = _load_yaml
        else:
            continue
        on_file(path)
        if load is _load_yaml:
            load_yaml = partial(_load_yaml, path, folder.name, defaults, dagster_rules=dagster_rules)
            products, errors = _through(cache, folder, path, load_yaml)
        else:
            products, errors = _load_python(path, folder.name, defaults, dagster_rules, specs.modules)
        specs.products.extend(products)
        specs.errors.extend(errors)
    return specs


def load_all(domains_dir: Path) -> dict[str, DomainSpecs]:
    return {folder.name: load_domain(folder) for folder in domain_folders(domains_dir)}


def domain_folder(product: DataProduct) -> Path:
    """The domain folder ``product`` was discovered in: its file's folder, or the one holding ``defs/`` for a
    product declared as a component (``<domain>/defs/<name>/defs.yaml``)."""
    assert product.source_file is not None
    source = product.source_file.resolve()
    for folder in source.parents:
        if folder.name == product.domain and (source.parent == folder or folder / DEFS_FOLDER in source.parents):
            return folder
    raise ValueError(f"{relative(source)} is not inside a folder named for its domain {product.domain!r}")
