"""Importing: the writing half of time-tracker exports.

Staging an upload (``uploads``), classifying its rows against the account's entries and writing them
(``importer``, with ``synced``, ``coverage`` and ``diff``), and confirming or undoing removals
(``removal``). It reads exports through ``hourtab.timesheets`` and hands the rows it changed to the
ledgers in ``hourtab.retainers``; neither of those imports anything from here.
"""
