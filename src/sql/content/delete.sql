DELETE FROM {table} WHERE id = ?1
