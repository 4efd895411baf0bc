#!/usr/bin/env python3
"""Single-file entry: `python3 compozy.py ARGS` behaves exactly like `compozy ARGS`.

It is also the zipapp's __main__.py. The package directory beside this file wins the import,
so `import compozy` below loads the package, not this script.
"""

if __name__ == "__main__":
    from compozy.cli.main import main

    main()
