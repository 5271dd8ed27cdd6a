-- As a superuser or the owner of the database appdb, connected to it: a
-- login role for nmauthd, and a schema of its own where it may create
-- its tables, and nothing else.
CREATE ROLE nmauthd LOGIN PASSWORD 'change-me';
CREATE SCHEMA nmauth;
GRANT CONNECT ON DATABASE appdb TO nmauthd;
GRANT USAGE, CREATE ON SCHEMA nmauth TO nmauthd;
ALTER ROLE nmauthd SET search_path = nmauth;
