"""The ufuncgen generator: signature files → parse → model → render → generated sources.

Runs at build time only; nothing here is imported when a generated module is used.
"""
from .diagnostics import SignatureError

__all__ = ["SignatureError", "load_module", "generate"]


def __getattr__(name: str):
    # The parser and the model load on first use: ufuncgen.load() checks a module name
    # (gen/names.py) on a cache hit without loading the generator.
    if name == "load_module":
        from .load import load_module
        return load_module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def generate(qualified_name: str, paths: list[str], out_dir: str, source_root: str | None = None,
             command: str | None = None, warnings_to=None) -> list[str]:
    """Generates the sources of one module into out_dir; returns the files rewritten.
    Warnings (integer division without a guard, ...) are printed to `warnings_to` when given."""
    from .diagnostics import format_warnings
    from .load import load_module
    from .render import render_module, write_outputs   # Jinja2 loads only when rendering

    module = load_module(qualified_name, paths, source_root)
    if module.warnings and warnings_to is not None:
        print(format_warnings(module.warnings), file=warnings_to)
    if command is None:
        command = f"python -m ufuncgen.gen --module {qualified_name} -o OUTDIR " + " ".join(module.sources)
    return write_outputs(render_module(module, command), out_dir)
