module icebench/s3-counter

go 1.22
