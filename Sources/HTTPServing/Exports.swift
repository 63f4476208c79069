// The upstream client and the response type the server shares with it: whoever serves HTTP
// with this module also forwards and fetches with it.
@_exported import HTTPFetching
