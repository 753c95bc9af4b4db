"""What the tests and the benchmarks both start and measure with: child processes and free ports
(procs), a private redis-server and Redis Cluster, throwaway PostgreSQL databases, and the
dashboard's PromQL. Not part of the installed package (like tests/ and benchmarks/); the
benchmarks may import the tests' helpers, the tests never import the benchmarks
(tests/test_standalone_packages.py)."""
