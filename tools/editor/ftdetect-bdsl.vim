" Brevis programs: install as ftdetect/bdsl.vim, beside syntax/bdsl.vim.
au BufRead,BufNewFile *.bdsl set filetype=bdsl
