"""`rag-server serve --workers N`: N serving processes on one port, over one data directory.

* supervisor.py, the parent: probes and reserves the port (SO_REUSEPORT), serves the aggregated metrics,
  starts the workers (spawned, before any grpc object exists anywhere), passes SIGTERM on, restarts a
  worker that died;
* child.py, each worker: the whole server (server.py) on the shared port, with its Role (rag_server/role.py,
  low enough for the app and the server to read); the owner's relay port for the other workers' Ingest
  and UploadDocument calls is opened by server.py (RelayPort), its service registered by api/services.py.

Ownership: worker 0 owns ingestion and the generation switch. With the embedded store it opens the data
dir for writing (its directory lock); the others serve a private copy of the generation it switched to and
follow each switch (store/follower.py). With a Qdrant server (RAG_STORE=qdrant, an http(s) URL) every
worker opens the server and follows the alias; ingestion still runs in worker 0 (one ingest at a time, one
uploads folder). A follower hands Ingest and UploadDocument to worker 0 (api/relay.py).
"""
