#!/usr/bin/env python3
"""`compozy.py` with the search indexer off, for bench/bench_index_stream.py: the daemon is the product's in
every other way; its Indexer never starts its thread and ignores every commit, so nothing is indexed.
Not a product switch: the product has none (the index is always fed).
"""

if __name__ == "__main__":
    from compozy.session.records.indexer import Indexer

    Indexer.started = lambda self: None
    Indexer.appended = lambda self, session, records: None

    from compozy.cli.main import main

    main()
