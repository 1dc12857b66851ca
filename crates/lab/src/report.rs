//! Reports of a run: text and JSON (being written).
