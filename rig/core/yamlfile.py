"""Reading a YAML file a user wrote: syntax errors and keys given twice as one InputError line."""

from __future__ import annotations

import yaml

from rig.core.errors import InputError


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping (PyYAML keeps the last silently)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:  # an unhashable key: the constructor below reports it
                continue
            if duplicate:
                mark = key_node.start_mark
                raise InputError(f"{self.name}:{mark.line + 1}:{mark.column + 1}", str(key), "given twice")
        return super().construct_mapping(node, deep)


def yaml_input_error(e: yaml.YAMLError, source: str) -> InputError:
    """`file:line:col: not valid YAML: problem` (PyYAML counts lines and columns from 0)."""
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
    problem = getattr(e, "problem", None) or str(e)
    context = getattr(e, "context", None)
    return InputError(where, "", f"not valid YAML: {problem}" + (f" ({context})" if context else ""))


def load_yaml(text: str, source: str) -> object:
    try:
        loader = _StrictLoader(text)  # it checks every character first: a control character is refused here
    except yaml.reader.ReaderError as e:
        line = text.count("\n", 0, e.position) + 1
        raise InputError(f"{source}:{line}", "", f"not valid YAML: character #x{e.character:04x} is not allowed") from None
    loader.name = source
    try:
        return loader.get_single_data()
    except yaml.YAMLError as e:
        raise yaml_input_error(e, source) from None
    finally:
        loader.dispose()
