"""A Bicep file read through the tree-sitter Bicep grammar: syntax errors, declarations, references, modules.

The Bicep compiler cannot be installed here (it is a .NET tool downloaded from GitHub), so this is the check
available: the published tree-sitter grammar (`tree-sitter-bicep` on PyPI) for syntax, plus the symbol and
module wiring read from its syntax tree. Types, property names and API versions are not checked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import tree_sitter
import tree_sitter_bicep

_PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bicep.language()))
_DECLARATIONS = {
    "parameter_declaration": "param",
    "variable_declaration": "var",
    "resource_declaration": "resource",
    "module_declaration": "module",
    "output_declaration": "output",
}


def _text(node: tree_sitter.Node) -> str:
    return node.text.decode("utf-8") if node.text is not None else ""


def _walk(node: tree_sitter.Node):
    yield node
    for child in node.children:
        yield from _walk(child)


def string_value(node: tree_sitter.Node) -> str | None:
    """The text of a string literal without interpolation, else None."""
    if node.type != "string" or any(child.type == "interpolation" for child in node.children):
        return None
    return "".join(_text(child) for child in node.children if child.type == "string_content")


def object_properties(node: tree_sitter.Node) -> dict[str, tree_sitter.Node]:
    """The properties of an object literal: key (identifier or string) to value node."""
    properties: dict[str, tree_sitter.Node] = {}
    for child in node.children:
        if child.type == "object_property":
            key, value = child.children[0], child.children[-1]
            name = string_value(key) if key.type == "string" else _text(key)
            if name is not None:
                properties[name] = value
    return properties


@dataclass(frozen=True)
class Declaration:
    """A top-level `param`, `var`, `resource`, `module` or `output`."""

    kind: str
    name: str
    node: tree_sitter.Node
    has_default: bool = False


@dataclass
class Module:
    """A `module` declaration: its symbol, the file it points at, the params it passes, and its `if` condition."""

    name: str
    path: str
    params: dict[str, tree_sitter.Node] = field(default_factory=dict)
    condition: str | None = None


def _body(declaration: tree_sitter.Node) -> tuple[tree_sitter.Node, str | None]:
    """The object a `module`/`resource` declares, and the condition of `= if (condition) {...}` (else None)."""
    for child in declaration.children:
        if child.type == "object":
            return child, None
        if child.type == "if_statement":
            condition = next(part for part in child.children if part.type == "parenthesized_expression")
            body = next(part for part in child.children if part.type == "object")
            return body, _text(condition)[1:-1].strip()
    raise ValueError(f"{_text(declaration)[:60]!r} declares no object")


class BicepFile:
    """One parsed Bicep file."""

    def __init__(self, path: Path) -> None:
        """Parse the file."""
        self.path = path
        self.tree = _PARSER.parse(path.read_bytes())

    def syntax_errors(self) -> list[str]:
        """`line:column text` of every ERROR or MISSING node (empty when the grammar accepts the file)."""
        return [
            f"{node.start_point[0] + 1}:{node.start_point[1] + 1} {node.type}{' (missing)' if node.is_missing else ''}"
            f" {_text(node)[:40]!r}"
            for node in _walk(self.tree.root_node)
            if node.type == "ERROR" or node.is_missing
        ]

    @cached_property
    def declarations(self) -> list[Declaration]:
        """Every top-level declaration, in order."""
        found = []
        for node in self.tree.root_node.children:
            kind = _DECLARATIONS.get(node.type)
            if kind is None:
                continue
            name = _text(node.children[1])
            # A param has a default when something follows its type: `param x string = 'a'`.
            has_default = kind == "param" and len(node.children) > 3
            found.append(Declaration(kind, name, node, has_default))
        return found

    def names(self, kind: str) -> list[str]:
        """The names declared with one keyword."""
        return [d.name for d in self.declarations if d.kind == kind]

    @cached_property
    def local_symbols(self) -> set[str]:
        """Names introduced inside declarations: loop variables and nested resources."""
        symbols = set()
        for node in _walk(self.tree.root_node):
            if node.type == "for_statement":
                initializer = node.child_by_field_name("initializer")
                if initializer is not None:
                    symbols.update(_text(n) for n in _walk(initializer) if n.type == "identifier")
            elif node.type == "resource_declaration" and node.parent is not None and node.parent.parent is not None:
                symbols.add(_text(node.children[1]))
        return symbols

    @cached_property
    def references(self) -> list[tuple[str, int]]:
        """Every identifier used as a value: `(name, line)`; keys, declared names and function names excluded."""
        used = []
        for node in _walk(self.tree.root_node):
            if node.type != "identifier" or node.parent is None:
                continue
            parent = node.parent
            if parent.type == "object_property" and parent.children[0] == node:
                continue
            if parent.type in _DECLARATIONS and parent.children[1] == node:
                continue
            if parent.type == "call_expression" and parent.child_by_field_name("function") == node:
                continue
            if parent.type == "for_statement" and parent.child_by_field_name("initializer") == node:
                continue
            used.append((_text(node), node.start_point[0] + 1))
        return used

    @cached_property
    def modules(self) -> list[Module]:
        """Every module declaration with its path and the params object it passes."""
        modules = []
        for declaration in self.declarations:
            if declaration.kind != "module":
                continue
            path_node = declaration.node.children[2]
            body, condition = _body(declaration.node)
            params_node = object_properties(body).get("params")
            params = object_properties(params_node) if params_node is not None else {}
            modules.append(Module(declaration.name, string_value(path_node) or "", params, condition))
        return modules

    def value(self, name: str) -> tree_sitter.Node:
        """The value of a top-level `var` or `output`, or the default of a `param`.

        Raises:
            KeyError: nothing of that name has a value.
        """
        for declaration in self.declarations:
            has_value = declaration.kind in ("var", "output") or (
                declaration.kind == "param" and declaration.has_default
            )
            if declaration.name == name and has_value:
                return declaration.node.children[-1]
        raise KeyError(name)

    def allowed_values(self, param: str) -> list[str]:
        """The strings of a param's `@allowed([...])` decorator (empty when it has none)."""
        declaration = next(d for d in self.declarations if d.kind == "param" and d.name == param)
        decorators = declaration.node.prev_sibling
        if decorators is None or decorators.type != "decorators":
            return []
        for node in _walk(decorators):
            if node.type == "call_expression" and _text(node.child_by_field_name("function") or node) == "allowed":
                return [value for n in _walk(node) if (value := string_value(n)) is not None]
        return []

    def module_output_references(self) -> list[tuple[str, str]]:
        """`(module symbol, output name)` for every `symbol.outputs.name` in the file."""
        found = []
        for node in _walk(self.tree.root_node):
            if node.type != "member_expression":
                continue
            inner = node.child_by_field_name("object")
            prop = node.child_by_field_name("property")
            if inner is None or prop is None or inner.type != "member_expression":
                continue
            base = inner.child_by_field_name("object")
            middle = inner.child_by_field_name("property")
            if base is not None and base.type == "identifier" and middle is not None and _text(middle) == "outputs":
                found.append((_text(base), _text(prop)))
        return found

    def resources(self) -> list[tuple[str, str, tree_sitter.Node]]:
        """`(symbol, type string, body object)` of every resource, nested ones included."""
        found = []
        for node in _walk(self.tree.root_node):
            if node.type != "resource_declaration":
                continue
            body = next((child for child in _walk(node) if child.type == "object"), None)
            if body is not None:
                found.append((_text(node.children[1]), string_value(node.children[2]) or "", body))
        return found

    def text(self) -> str:
        """The file's source."""
        return self.path.read_text(encoding="utf-8")
