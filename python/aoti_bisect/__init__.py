"""aoti-bisect, installed by pip: the command is the C++ driver in bin/ (see _cli)."""

__version__ = "0.1.0"
