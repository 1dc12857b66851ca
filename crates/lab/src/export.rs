//! Exports of a run's events to CSV and Parquet (being written).
