from ._cli import _entry

_entry()
