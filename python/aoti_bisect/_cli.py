"""The `aoti-bisect` console script of a pip install.

It runs the C++ driver installed inside this package (bin/aoti-bisect),
with the cmake and ninja this package depends on at the end of PATH (the
first run builds a runner against the user's torch), and names the Python
it runs under in AOTI_BISECT_ENTRY_PYTHON: a venv's Python, whose torch the
driver takes when --python is not given (docs/supported.md, "the torch
wanted").
"""

import os
import sys


def _tool_dirs():
    dirs = []
    try:
        import cmake

        dirs.append(cmake.CMAKE_BIN_DIR)
    except (ImportError, AttributeError):
        pass
    try:
        import ninja

        dirs.append(ninja.BIN_DIR)
    except (ImportError, AttributeError):
        pass
    return dirs


def main():
    exe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "aoti-bisect")
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([p for p in [env.get("PATH", "")] + _tool_dirs() if p])
    env.setdefault("AOTI_BISECT_ENTRY_PYTHON", sys.executable)
    try:
        os.execve(exe, [exe] + sys.argv[1:], env)
    except OSError as e:
        sys.stderr.write("aoti-bisect: error: cannot start %s (%s); reinstall aoti-bisect\n" % (exe, e.strerror))
        sys.exit(5)


if __name__ == "__main__":
    main()
