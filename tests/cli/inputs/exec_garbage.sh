# A --exec child that greets properly, then answers the first request with binary garbage (bytes
# that are not UTF-8, a NUL, terminal escapes): a failed check, never a JSON library exception.
read -r line
printf '{"ok": true, "name": "garbage", "outputs": ["rope_table"]}\n'
read -r line
printf '\223\000\377{\033[2J\376 not a header\n'
sleep 5
