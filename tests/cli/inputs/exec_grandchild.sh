# A --exec child that starts a grandchild in its process group (sleep with a marker argument
# given as $1), greets, and never answers: a SIGINT or SIGTERM to pev must end the grandchild too.
sleep "$1" &
read -r line
printf '{"ok": true, "name": "grandchild", "outputs": ["rope_table"]}\n'
read -r line
sleep 1000
