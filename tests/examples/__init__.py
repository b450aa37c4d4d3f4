# A package, so that these test modules' names cannot clash with other tests/ directories.
