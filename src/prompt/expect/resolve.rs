//! Expectations checked against the prompt (placeholder until the schema checks land).
