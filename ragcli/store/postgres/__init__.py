"""The PostgreSQL backend (psycopg 3 + pgvector): connection, schema, search. See store/backend.py."""
