"""The lake's marts, one module per job.

``scripts`` holds the SQL scripts that rebuild staging and the partitioned marts (and swap in
the computed insight marts); ``insights`` the reads behind the insight assets (a workspace's
window of the marts); ``checks`` the reads behind the asset checks; ``runs`` the reads of
the ingest assets, the import sensor and run_all, with the marker of a complete run; and
``definitions`` the few names several of them share (the counters, the file-written marts).
"""
