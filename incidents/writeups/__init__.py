"""Writeups: incidents as a person edits them, the report built from their evidence, its HTML and
PDF, publishing, and the log entry on the client's hours page. The only caller of the report builder."""
