# A --exec child that writes 8 MiB to stderr before it greets: pev passes on at most 1 MiB.
head -c 8388608 /dev/zero | tr '\0' 'e' >&2
read -r line
printf '{"ok": true, "name": "stderr-flood", "outputs": []}\n'
