# A --exec child whose name and error message hold terminal escape sequences (colour, window
# title, bell): pev shows them escaped.
read -r line
printf '{"ok": true, "name": "\\u001b[31mRED\\u001b[0m", "outputs": ["rope_table"]}\n'
read -r line
printf '{"ok": false, "error": "bad\\u001b]0;pwned\\u0007"}\n'
