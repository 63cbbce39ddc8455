"""Posts and media: validate, create, edit, schedule and cancel posts; read them and media."""
