"""Several bench hosts through Dask distributed: an executor of the one night (dask_executor.py),
each host (host.py) measuring one job at a time in its own clone of the target."""

from .dask_executor import DaskExecutor, bench_hosts

__all__ = ["DaskExecutor", "bench_hosts"]
