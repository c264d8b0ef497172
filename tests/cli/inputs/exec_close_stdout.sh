# A --exec child that greets, then closes its stdout and stays alive: pev must notice at once,
# not after --timeout. (Run with `exec sh FILE`, so that no waiting shell keeps a copy of stdout.)
read -r line
printf '{"ok": true, "name": "closes-stdout", "outputs": ["rope_table"]}\n'
exec >&-
sleep 30
