# A --exec implementation that greets, then declares a 4-EiB tensor (bad_inputs.tsv): refused
# before any allocation.
read -r _
printf '{"ok":true,"outputs":["rope_table"]}\n'
read -r _
printf '{"ok":true,"tensors":[{"name":"cos","dtype":"fp32","shape":[1099511627776,1099511627776]}]}\n'
