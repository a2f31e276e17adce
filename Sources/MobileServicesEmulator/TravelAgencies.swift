/// One travel agency of the proxied back end, in the shape of the SAP flight model's `TravelAgencies` entity set
/// (`RMTSAMPLEFLIGHT`). The data is fixed sample data.
public struct TravelAgency: Sendable, Equatable {
    public let agencynum: String
    public let name: String
    public let street: String
    public let postcode: String
    public let city: String
    public let country: String
    public let telephone: String
    public let url: String
    public let currency: String

    /// The agencies `GET /{appId}/TravelAgencies` returns, in this order.
    public static let all: [TravelAgency] = [
        TravelAgency(
            agencynum: "00000055", name: "Fly High", street: "Kurfuerstendamm 12", postcode: "10719",
            city: "Berlin", country: "DE", telephone: "+49 30 8812345", url: "http://www.flyhigh.example",
            currency: "EUR"),
        TravelAgency(
            agencynum: "00000061", name: "Happy Hopping", street: "Calvinstr. 36", postcode: "13467",
            city: "Berlin", country: "DE", telephone: "+49 30 4066190", url: "http://www.happyhopping.example",
            currency: "EUR"),
        TravelAgency(
            agencynum: "00000087", name: "Pink Panther", street: "Auf der Schanz 54", postcode: "65936",
            city: "Frankfurt", country: "DE", telephone: "+49 69 4123454", url: "http://www.pinkpanther.example",
            currency: "EUR"),
        TravelAgency(
            agencynum: "00000093", name: "Your Choice", street: "Gustav-Jung-Str. 425", postcode: "90455",
            city: "Nuernberg", country: "DE", telephone: "+49 911 3312347", url: "http://www.yc.example",
            currency: "EUR"),
        TravelAgency(
            agencynum: "00000099", name: "Travel from Walldorf", street: "Altonaer Str. 24", postcode: "10557",
            city: "Walldorf", country: "DE", telephone: "+49 6227 2938", url: "http://www.travel-from-walldorf.example",
            currency: "EUR"),
    ]

    func json(serviceRoot: String) -> JSONValue {
        let uri = "\(serviceRoot)/TravelAgencies('\(agencynum)')"
        return .object([
            ("__metadata", .object([("id", .string(uri)), ("uri", .string(uri)), ("type", .string("RMTSAMPLEFLIGHT.Travelagency"))])),
            ("agencynum", .string(agencynum)),
            ("NAME", .string(name)),
            ("STREET", .string(street)),
            ("POSTBOX", .string("")),
            ("POSTCODE", .string(postcode)),
            ("CITY", .string(city)),
            ("COUNTRY", .string(country)),
            ("REGION", .string("")),
            ("TELEPHONE", .string(telephone)),
            ("URL", .string(url)),
            ("LANGU", .string("E")),
            ("CURRENCY", .string(currency)),
        ])
    }
}
