# A --exec implementation whose greeting has "ok" as a string (bad_inputs.tsv).
read -r _
printf '{"ok":"yes"}\n'
