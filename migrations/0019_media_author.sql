-- Media ownership (EmDash's media RBAC): a media row records the token that registered or
-- uploaded it in `author_id`, as content entries record theirs. The column exists since 0001 and
-- nothing wrote it before: those rows hold NULL, an unknown author, which is nobody's own (only
-- editors and admins change them). Below editor, a token updates or deletes only media whose
-- `author_id` is its own id; the writing statement carries that condition.
--
-- The author is written once, on insert: any later change of it is refused, so what a request
-- read of an item's author stays true for as long as the row exists (media ids are never reused).
CREATE TRIGGER media_author_id_fixed
BEFORE UPDATE OF author_id ON media
WHEN OLD.author_id IS NOT NEW.author_id
BEGIN
  SELECT RAISE(ABORT, 'CHECK constraint failed: media.author_id is written once');
END;
