"""PSN with bounded supports, run region by region: the state of each region lives with the
region (in Spark executors, see ``spark/resident.py``), and regions talk only by messages."""
