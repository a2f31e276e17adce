/// The 1,000 most common passwords, most common first, separated by spaces: the first 1,000 of zxcvbn's
/// `passwords` list (https://github.com/dropbox/zxcvbn, MIT licence; as its Python port 4.4.28 ships them), which
/// ranks them by how often they appear in leaked password sets. A password's rank (1 the most common) is the number
/// of guesses an attacker trying them in this order needs (`PassphraseStrength`).
enum CommonPasswords {
    static let ranked: [String: Int] = {
        var ranks: [String: Int] = [:]
        for (index, word) in text.split(separator: " ").enumerated() where ranks[String(word)] == nil { ranks[String(word)] = index + 1 }
        return ranks
    }()

    static let text = """
        123456 password 12345678 qwerty 123456789 12345 1234 111111 1234567 dragon 123123 baseball abc123 football \
        monkey letmein shadow master 696969 mustang 666666 qwertyuiop 123321 1234567890 pussy superman 654321 \
        1qaz2wsx 7777777 fuckyou qazwsx jordan 123qwe 000000 killer trustno1 hunter harley zxcvbnm asdfgh buster \
        batman soccer tigger charlie sunshine iloveyou fuckme ranger hockey computer starwars asshole pepper klaster \
        112233 zxcvbn freedom princess maggie pass ginger 11111111 131313 fuck love cheese 159753 summer chelsea \
        dallas biteme matrix yankees 6969 corvette austin access thunder merlin secret diamond hello hammer fucker \
        1234qwer silver gfhjkm internet samantha golfer scooter test orange cookie q1w2e3r4t5 maverick sparky phoenix \
        mickey bigdog snoopy guitar whatever chicken camaro mercedes peanut ferrari falcon cowboy welcome sexy \
        samsung steelers smokey dakota arsenal boomer eagles tigers marina nascar booboo gateway yellow porsche \
        monster spider diablo hannah bulldog junior london purple compaq lakers iceman qwer1234 hardcore cowboys \
        money banana ncc1701 boston tennis q1w2e3r4 coffee scooby 123654 nikita yamaha mother barney brandy chester \
        fuckoff oliver player forever rangers midnight chicago bigdaddy redsox angel badboy fender jasper slayer \
        rabbit natasha marine bigdick wizard marlboro raiders prince casper fishing flower jasmine iwantu panties \
        adidas winter winner gandalf password1 enter ghbdtn 1q2w3e4r golden cocacola jordan23 winston madison angels \
        panther blowme sexsex bigtits spanky bitch sophie asdfasdf horny thx1138 toyota tiger dick canada 12344321 \
        blowjob 8675309 muffin liverpoo apples qwerty123 passw0rd abcd1234 pokemon 123abc slipknot qazxsw 123456a \
        scorpion qwaszx butter startrek rainbow asdfghjkl razz newyork redskins gemini cameron qazwsxedc florida \
        liverpool turtle sierra viking booger butthead doctor rocket 159357 dolphins captain bandit jaguar packers \
        pookie peaches 789456 asdf dolphin helpme blue theman maxwell qwertyui shithead lovers maddog giants nirvana \
        metallic hotdog rosebud mountain warrior stupid elephant suckit success bond007 jackass alexis porn lucky \
        scorpio samson q1w2e3 azerty rush2112 driver freddy 1q2w3e4r5t sydney gators dexter red123 123456q 12345a \
        bubba creative voodoo golf trouble america nissan gunner garfield bullshit asdfghjk 5150 fucking apollo \
        1qazxsw2 2112 eminem legend airborne bear beavis apple brooklyn godzilla skippy 4815162342 buddy qwert kitten \
        magic shelby beaver phantom asdasd xavier braves darkness blink182 copper platinum qweqwe tomcat 01012011 \
        girls bigboy 102030 animal police online 11223344 voyager lifehack 12qwaszx fish sniper 315475 trinity blazer \
        heaven lover snowball playboy loveme bubbles hooters cricket willow donkey topgun nintendo saturn destiny \
        pakistan pumpkin digital sergey redwings explorer tits private runner therock guinness lasvegas beatles \
        789456123 fire cassie christin qwerty1 celtic asdf1234 andrey broncos 007007 babygirl eclipse fluffy cartman \
        michigan carolina testing alexande birdie pantera cherry vampire mexico dickhead buffalo genius montana beer \
        minecraft maximus flyers lovely stalker metallica doggie snickers speedy bronco lol123 paradise yankee horses \
        magnum dreams 147258369 lacrosse ou812 goober enigma qwertyu scotty pimpin bollocks surfer cock poohbear \
        genesis star asd123 qweasdzxc racing hello1 hawaii eagle1 viper poopoo einstein boobies 12345q bitches \
        drowssap simple badger alaska action jester drummer 111222 spitfire forest maryjane champion diesel svetlana \
        friday hotrod 147258 chevy lucky1 westside security google badass tester shorty thumper hitman mozart \
        zaq12wsx boobs reddog 010203 lizard a123456 123456789a ruslan eagle 1232323q scarface qwerty12 147852 a12345 \
        buddha porno 420420 spirit money1 stargate qwe123 naruto mercury liberty 12345qwert semperfi suzuki popcorn \
        spooky marley scotland kitty cherokee vikings simpsons rascal qweasd hummer loveyou michael1 patches russia \
        jupiter penguin passion cumshot vfhbyf honda vladimir sandman passport raider bastard 123789 infinity assman \
        bulldogs fantasy sucker 1234554321 horney domino budlight disney ironman usuckballz1 softball brutus redrum \
        bigred mnbvcxz fktrcfylh karina marines digger kawasaki cougar fireman oksana monday cunt justice nigger \
        super wildcats tinker logitech dancer swordfis avalon everton alexandr motorola patriots hentai madonna \
        pussy1 ducati colorado connor juventus galore smooth freeuser warcraft boogie titanic wolverin elizabet \
        arizona valentin saints asdfg accord test123 password123 christ yfnfif stinky slut spiderma naughty chopper \
        hello123 ncc1701d extreme skyline poop zombie pearljam 123qweasd froggy awesome vision pirate fylhtq dreamer \
        bullet predator empire 123123a kirill charlie1 panthers penis skipper nemesis rasdzv3 peekaboo rolltide \
        cardinal psycho danger mookie happy1 wanker chevelle manutd goblue 9379992 hobbes vegeta fyfcnfcbz 852456 \
        picard 159951 windows loverboy victory vfrcbv bambam serega 123654789 turkey tweety galina hiphop rooster \
        changeme berlin taurus suckme polina electric avatar 134679 maksim raptor alpha1 hendrix newport bigcock \
        brazil spring a1b2c3 madmax alpha britney sublime darkside bigman wolfpack classic hercules ronaldo letmein1 \
        1q2w3e 741852963 spiderman blizzard 123456789q cheyenne cjkysirj tiger1 wombat bubba1 pandora zxc123 holiday \
        wildcat devils horse alabama 147852369 caesar 12312 buddy1 bondage pussycat pickle shaggy catch22 leather \
        chronic a1b2c3d4 admin qqq111 qaz123 airplane kodiak freepass billybob sunset katana phpbb chocolat snowman \
        angel1 stingray firebird wolves zeppelin detroit pontiac gundam panzer vagina outlaw redhead tarheels \
        greenday nastya 01011980 hardon engineer dragon1 hellfire serenity cobra fireball lickme darkstar 1029384756 \
        01011 mustang1 flash 124578 strike beauty pavilion 01012000 bobafett dbrnjhbz bigmac bowling chris1 ytrewq \
        natali pyramid rulez welcome1 dodgers apache swimming whynot teens trooper fuckit defender precious 135790 \
        packard weasel popeye lucifer cancer icecream 142536 raven swordfish presario viktor rockstar blonde james1 \
        wutang spike pimp atlanta airforce thailand casino lennon mouse 741852 hacker bluebird hawkeye 456123 theone \
        catfish sailor goldfish nfnmzyf tattoo pervert barbie maxima nipples machine trucks wrangler rocks tornado \
        lights cadillac bubble pegasus madman longhorn browns target 666999 eatme qazwsx123 microsoft dilbert \
        christia baller lesbian shooter xfiles seattle qazqaz cthutq amateur prelude corona freaky malibu \
        123qweasdzxc assassin 246810 atlantis integra pussies iloveu lonewolf dragons monkey1 unicorn software bobcat \
        stealth peewee openup 753951 srinivas zaqwsx valentina shotgun trigger veronika bruins coyote babydoll joker \
        dollar lestat rocky1 hottie random butterfly wordpass smiley sweety snake chipper woody samurai devildog \
        gizmo maddie soso123aljg mistress freedom1 flipper express hjvfirf moose cessna piglet polaris teacher \
        montreal cookies wolfgang scully fatboy wicked balls tickle bunny dfvgbh foobar transam pepsi fetish oicu812 \
        basketba toshiba hotstuff sunday booty gambit 31415926 impala stephani jessica1 hooker lancer knicks shamrock \
        fuckyou2 stinger 314159 redneck deftones squirt siemens blaster trucker subaru renegade ibanez manson swinger \
        reaper blondie mylove galaxy blahblah enterpri travel 1234abcd babylon5 indiana skeeter master1 sugar ficken \
        smoke bigone sweetpea fucked trfnthbyf marino escort smitty bigfoot babes larisa trumpet spartan valera \
        babylon asdfghj yankees1 bigboobs stormy mister hamlet aardvark butterfl marathon paladin cavalier manchester \
        skater indigo hornet buckeyes 01011990 indians karate hesoyam toronto diamonds chiefs buckeye 1qaz2wsx3edc
        """
}
