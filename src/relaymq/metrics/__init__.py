"""Prometheus metrics of the broker process (issue 18): collectors that read the live state of
the broker and its services when scraped (``mqtt.py``, ``services.py``), and the ``GET
/metrics`` route (``endpoint.py``). Nothing is counted twice: the counters are the broker's own
(relaymq.broker.stats, the storage engine, the services)."""
