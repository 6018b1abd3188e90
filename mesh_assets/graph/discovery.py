"""Discovery: every ``domains/<domain>/`` folder is scanned; one file per product, no registration.

Python files contribute the :class:`Product` objects they define; YAML files are declarative products.
Every problem is collected as a :class:`SpecError` naming the file, line and field.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from mesh_assets.graph import component_specs, yaml_lines
from mesh_assets.graph.rules import product_errors
from mesh_assets.model.author import Product, loading
from mesh_assets.model.errors import SpecError, relative
from mesh_assets.model.names import IDENTIFIER
from mesh_assets.model.product import DataProduct

SKIPPED_PY = {"definitions.py", "__init__.py"}
Loaded = tuple[list[DataProduct], list[SpecError]]


@dataclass
class DomainSpecs:
    domain: str
    folder: Path
    products: list[DataProduct] = field(default_factory=list)
    errors: list[SpecError] = field(default_factory=list)


def domain_folders(domains_dir: Path) -> list[Path]:
    return sorted(p for p in domains_dir.iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))


TRANSFORMATION_FIELDS = {"kind", "inputs", "sql", "sql_file", "range_aware", "line"}


def _yaml_loc(loc: tuple) -> tuple:
    """A model error location in YAML terms: ``transformations.0.output.table`` -> ``tables.0.table``."""
    if loc[:1] == ("transformations",):
        loc = ("tables", *loc[1:])
        if len(loc) > 2 and loc[2] == "output":
            loc = loc[:2] + loc[3:]
    return loc


def _pydantic_errors(exc: ValidationError, file: Path, lines: yaml_lines.Lines, yaml_style: bool) -> list[SpecError]:
    out = []
    for err in exc.errors():
        loc = tuple(
            p for p in err["loc"] if not (isinstance(p, str) and p in {"pyspark", "sql"} and p != err["loc"][-1])
        )
        if yaml_style:
            loc = _yaml_loc(loc)
        out.append(
            SpecError(
                relative(file),
                yaml_lines.line_for(lines, loc),
                ".".join(str(p) for p in loc) or "<product>",
                f"unknown field {loc[-1]!r}" if err["type"] == "extra_forbidden" and loc else err["msg"],
            )
        )
    return out


def _with_lines(inputs: object, lines: yaml_lines.Lines, at: tuple) -> object:
    """YAML inputs, each with the line it is declared on (a list of inputs, or inputs by name)."""
    if isinstance(inputs, list):
        return [{**x, "line": lines.get((*at, j))} if isinstance(x, dict) else x for j, x in enumerate(inputs)]
    if isinstance(inputs, dict):
        return {k: {**x, "line": lines.get((*at, k))} if isinstance(x, dict) else x for k, x in inputs.items()}
    return inputs


def _load_yaml(path: Path, domain: str, at: tuple[str, ...] = ()) -> tuple[list[DataProduct], list[SpecError]]:
    try:
        data, lines = yaml_lines.load(path)
    except yaml_lines.SpecRefused as exc:
        return [], [SpecError(relative(path), None, "", str(exc))]
    except Exception as exc:  # yaml.YAMLError carries its own line
        mark = getattr(exc, "problem_mark", None)
        return [], [SpecError(relative(path), mark.line + 1 if mark else None, "", f"invalid YAML: {exc}")]
    if not isinstance(data, dict):
        return [], [SpecError(relative(path), 1, "", "a product spec must be a YAML mapping")]
    if at:
        data, lines = component_specs.within(data, lines, at)
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
                "output": {k: v for k, v in raw.items() if k not in TRANSFORMATION_FIELDS},
                "line": lines.get(("tables", i)),
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
    fields = {k: v for k, v in data.items() if k not in {"tables", "external"}}
    fields.update(domain=domain, transformations=transformations, external=external, source_file=path, line=1)
    try:
        product = DataProduct.model_validate(fields)
    except ValidationError as exc:
        return [], errors + _pydantic_errors(exc, path, lines, yaml_style=True)
    return ([product] if not errors else []), errors + product_errors(product, lines)


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


def _load_components(folder: Path, cache: YamlCache | None = None) -> Loaded:
    """The products declared as ``mesh_assets.DataProduct`` components: their ``attributes`` are a product spec,
    validated (and reported with file, line and field) exactly as a product's YAML file is."""
    products: list[DataProduct] = []
    errors: list[SpecError] = []

    def load(path: Path) -> Loaded:
        if component_specs.component_type(path) != COMPONENT_TYPE:
            return [], []  # another kind of component: Dagster's to load
        return _load_yaml(path, folder.name, at=("attributes",))

    for path in sorted((folder / DEFS_FOLDER).glob("**/defs.yaml")):
        loaded = _through(cache, folder, path, lambda path=path: load(path))
        products.extend(loaded[0])
        errors.extend(loaded[1])
    return products, errors


def _load_python(path: Path, domain: str) -> tuple[list[DataProduct], list[SpecError]]:
    module_name = f"mesh_domains.{domain}.{path.stem}"
    try:
        spec = importlib.util.spec_from_file_location(module_name, path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        with loading(path):
            spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # a product file that calls sys.exit fails alone, too
        tb = exc.__traceback__
        line = None
        while tb is not None:
            if Path(tb.tb_frame.f_code.co_filename).resolve() == path.resolve():
                line = tb.tb_lineno
            tb = tb.tb_next
        why = f"calls sys.exit({exc.code!r})" if isinstance(exc, SystemExit) else f"{type(exc).__name__}: {exc}"
        return [], [SpecError(relative(path), line, "", why)]
    products, errors = [], []
    here = path.resolve()
    for value in vars(module).values():
        if not isinstance(value, Product) or (value.source_file != path and value.source_file.resolve() != here):
            continue
        fields = {**value.spec_fields(), "source_file": path, "line": value.line}
        if fields.setdefault("domain", domain) != domain:
            errors.append(
                SpecError(
                    relative(path),
                    value.line,
                    "domain",
                    f"product says domain {fields['domain']!r} but lives in domains/{domain}/",
                )
            )
            continue
        try:
            product = DataProduct.model_validate(fields)
        except ValidationError as exc:
            lines = {(): value.line}
            lines.update({("transformations", i): t["line"] for i, t in enumerate(value.transformations)})
            errors.extend(_pydantic_errors(exc, path, lines, yaml_style=False))
            continue
        products.append(product)
        at = {("tables", i): t["line"] for i, t in enumerate(value.transformations)}
        errors.extend(product_errors(product, {(): value.line, **at}))
    return products, errors


def is_python_product(path: Path) -> bool:
    return path.suffix == ".py" and path.name not in SKIPPED_PY and not path.name.startswith("_")


def load_domain(
    folder: Path, on_file: Callable[[Path], object] = lambda path: None, cache: YamlCache | None = None
) -> DomainSpecs:
    """Load every product in one domain folder, collecting all errors instead of stopping at the first;
    ``on_file`` hears of each file before it is loaded. YAML products found in ``cache`` are taken from it, and
    those read are added to it; Python files always run (their products are the code)."""
    specs = DomainSpecs(domain=folder.name, folder=folder)
    if not IDENTIFIER.fullmatch(folder.name):
        specs.errors.append(SpecError(relative(folder), None, "domain", f"invalid domain name {folder.name!r}"))
        return specs
    specs.products, specs.errors = _load_components(folder, cache)
    for path in sorted(folder.iterdir()):
        if is_python_product(path):
            load = _load_python
        elif path.suffix in {".yaml", ".yml"}:
            load = _load_yaml
        else:
            continue
        on_file(path)
        if load is _load_yaml:
            products, errors = _through(cache, folder, path, lambda path=path: _load_yaml(path, folder.name))
        else:
            products, errors = load(path, folder.name)
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
