module gmprt-bench/million_tasks

go 1.19
