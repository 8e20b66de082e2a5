"""Writing to disk: whole-or-nothing new files and the offline export of packets and pairs.

Writing to disk: whole-or-nothing new files (`safeio`) and the offline HTML / PNG / JSON export of packets and
pairs (`pages`).
"""
