"""Several bench hosts through Dask distributed: the driver (driver.py) keeps the loop's logic,
each host (host.py) measures one experiment at a time in its own clone of the target."""

from .dispatch import run_cluster_session

__all__ = ["run_cluster_session"]
