"""Stage 5b: the Streamlit dashboard; reads the store only, never Spark."""
