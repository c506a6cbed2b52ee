"""The data pipeline: an append-only, partitioned message log fed by archive rules, and the
PySpark data source and sink that read it and write back to the broker (issue 7).

Layers, each usable without the ones after it:

* ``settings``, ``record``, ``partitioning``, ``offsets``, ``ledger``: pure model code (no I/O
  beyond the files a caller hands them, no Spark);
* ``log``: the message log, in the broker's database (``<data_dir>/relaymq.db``) or a file of its own;
* ``arrowio`` and ``fetch``: Arrow IPC encoding of a partition range and the HTTP fetch endpoint;
* ``service``: the broker service that taps publications and queue puts into the log;
* ``source``, ``sink``, ``sparkflows``, ``runner``: the Spark side (needs the ``spark`` extra:
  pyspark, pandas, pyarrow).
"""
